import java.util.Locale;
import org.apache.commons.math3.analysis.UnivariateFunction;
import org.apache.commons.math3.analysis.interpolation.AkimaSplineInterpolator;
import org.apache.commons.math3.analysis.interpolation.DividedDifferenceInterpolator;
import org.apache.commons.math3.analysis.interpolation.LinearInterpolator;
import org.apache.commons.math3.analysis.interpolation.LoessInterpolator;
import org.apache.commons.math3.analysis.interpolation.NevilleInterpolator;
import org.apache.commons.math3.analysis.interpolation.SplineInterpolator;
import org.apache.commons.math3.analysis.interpolation.UnivariateInterpolator;

/** Prints, as JSON, what each Apache Commons Math interpolator gives at every whole hour for fixed knots. */
public class Reference {
  public static void main(String[] args) {
    // Hours with a value; the hours missing between them are gaps.
    double[][] small = {{0, 1, 3, 4, 5, 8, 9, 10, 12}, {10.0, 12.5, 11.0, 15.5, 14.0, 9.5, 11.0, 13.5, 12.0}};
    double[] x = new double[20], y = new double[20];
    for (int i = 0, h = 0; i < 20; i++, h += (i % 4 == 0) ? 2 : 1) {
      x[i] = h;
      y[i] = 20 + 5 * Math.sin(h / 3.0) + ((i * 7919) % 13) / 4.0 + (i == 11 ? 12 : 0); // one outlier
    }
    System.out.print("{\"cases\": [\n" + json(small[0], small[1]) + ",\n" + json(x, y) + "\n]}\n");
  }

  static String json(double[] x, double[] y) {
    String[] names = {"linear", "spline", "akimaSpline", "loess", "neville", "dividedDifference"};
    UnivariateInterpolator[] interpolators = {
      new LinearInterpolator(), new SplineInterpolator(), new AkimaSplineInterpolator(),
      new LoessInterpolator(0.3, 2), new NevilleInterpolator(), new DividedDifferenceInterpolator()
    };
    int last = (int) x[x.length - 1];
    StringBuilder out = new StringBuilder("  {\"knots\": {\"x\": " + array(x) + ", \"y\": " + array(y) + "}");
    for (int a = 0; a < names.length; a++) {
      UnivariateFunction f = interpolators[a].interpolate(x, y);
      double[] at = new double[last + 1];
      for (int h = 0; h <= last; h++) at[h] = f.value(h);
      out.append(",\n   \"").append(names[a]).append("\": ").append(array(at));
    }
    return out.append("}").toString();
  }

  static String array(double[] values) {
    StringBuilder s = new StringBuilder("[");
    for (int i = 0; i < values.length; i++) s.append(i > 0 ? ", " : "").append(String.format(Locale.ROOT, "%.17g", values[i]));
    return s.append("]").toString();
  }
}
